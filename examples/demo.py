"""Placeholder: the lead writes the real demo (make demo)."""

print("demo not written yet")
