"""Reusable widgets: tables synced by key, the top line, the findings panel."""
