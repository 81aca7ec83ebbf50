"""Synchronisation resources: the TPipe's event-ID pools and back-pressure flags."""
