"""Configuration errors."""


class ConfigError(Exception):
    """The configuration cannot be used; the message says what and where."""

    code = "config_invalid"
    retryable = False
