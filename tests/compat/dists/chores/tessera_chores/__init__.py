"""Household chores for Tessera."""
