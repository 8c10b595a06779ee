"""What a ``ClientGroup`` decides without I/O: the names across servers and the plan of a group.
"""
