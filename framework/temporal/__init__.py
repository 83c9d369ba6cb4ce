"""Time: the injected clock, Airbyte's datetime formats, ISO 8601 durations and instants."""
