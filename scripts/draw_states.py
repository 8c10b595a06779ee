"""Write docs/states.md from the machine's transition tables (mcp_core/_vocabulary/phases.py).

tests/core/vocabulary/test_phases.py fails while the file and the tables disagree: run this after
changing a table, and read the diff.
"""

from pathlib import Path

from mcp_core.states import render_tables

TARGET = Path(__file__).resolve().parent.parent / "docs" / "states.md"

if __name__ == "__main__":
    TARGET.write_text(render_tables())
    print(f"wrote {TARGET}")
