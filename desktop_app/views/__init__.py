"""Widgets: they show what the bridge reports and ask it to act; no engine logic here."""
