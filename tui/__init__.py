"""The Textual dashboard. The only package that imports textual."""
