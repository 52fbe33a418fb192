"""Row models: plain rows the screens turn into cells."""
