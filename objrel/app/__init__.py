"""Streamlit-only helpers: cached store reads, widgets (sign-in, navigation, number formats) and review panels."""
