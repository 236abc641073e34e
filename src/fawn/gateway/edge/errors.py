"""What the edge refuses, as errors carrying their code (the status comes from the one table
in :mod:`fawn.gateway.errors`).

```
EdgeError                    bad_request
 ├── HostNotAllowed          host_not_allowed        (400)
 ├── CrossSiteRequest        cross_site_request      (403)
 ├── BodyTooLarge            request_too_large       (413)
 ├── UnsupportedMediaType    unsupported_media_type  (415)
 └── InvalidJsonBody         invalid_input           (422)
```
"""

from __future__ import annotations


class EdgeError(Exception):
    """A request refused before it reached a route: nothing of it was processed."""

    code = "bad_request"
    retryable = False


class HostNotAllowed(EdgeError):
    code = "host_not_allowed"


class CrossSiteRequest(EdgeError):
    code = "cross_site_request"


class BodyTooLarge(EdgeError):
    code = "request_too_large"


class UnsupportedMediaType(EdgeError):
    code = "unsupported_media_type"


class InvalidJsonBody(EdgeError):
    code = "invalid_input"
