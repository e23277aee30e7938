"""The prose of the book's chapters, every number read from the report's files."""
