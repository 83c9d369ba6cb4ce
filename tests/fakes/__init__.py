"""Fakes shared by integration and end-to-end tests (see ``fakes.api_server``)."""
