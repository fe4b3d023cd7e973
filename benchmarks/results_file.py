"""Writing one part's results table: the one writer every benchmark script uses.

The table is the JSON contract report.py reads (part, title, method, columns,
rows, headline, notes). Written to a temporary file and renamed, so a part that
dies half-way never leaves a truncated table behind.
"""
import json
import os


def write_table(table, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(table, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
