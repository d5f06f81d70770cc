"""Tessera plugin tracker."""
