"""Tessera sample plugin: helpdesk tickets."""
