"""Scripts that draw parts of docs/ from the code and the tests (run them as files, e.g.
``python scripts/fault_matrix_table.py --write``). A package so that the tests'
``from scripts.doc_section import shown_and_drawn`` finds this directory before any other
``scripts`` an installed distribution might bring."""
