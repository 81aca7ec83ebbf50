"""The textual IR: its grammar, parser and printer (house style 3.7)."""
