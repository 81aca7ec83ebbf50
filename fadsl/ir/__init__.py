"""The fadsl IR: typed frozen nodes, a builder, a printer and a parser for its text form."""
