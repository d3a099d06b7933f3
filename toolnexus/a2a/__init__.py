"""The A2A protocol: the canonical model, the dialects on the wire, cards, the client, push notifications."""
