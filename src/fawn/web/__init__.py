"""fawn's conversation page: static HTML, CSS and ES modules, no build step.

The gateway serves ``static/index.html`` at ``/`` and the rest under ``/_ui/`` (see
`fawn.gateway.routers.web`); the page talks to the public API only.
"""
