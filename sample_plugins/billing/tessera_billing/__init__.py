"""Tessera sample plugin: invoices."""
