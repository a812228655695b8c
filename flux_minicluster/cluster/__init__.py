"""Talking to a live cluster with the `kubernetes` client: the keygen provider and the operations tool."""
