"""Reading CSV files one record per line (docs/data.md, "CSV input")."""
