"""Keys with scopes, visitor tokens that prove principals, and rate limits (see the README's
"Security model"). One concept per module: :mod:`~electa.auth.scopes`, :mod:`~electa.auth.keys`,
:mod:`~electa.auth.tokens`, :mod:`~electa.auth.ratelimit`, and :mod:`~electa.auth.identity`,
which resolves a request's ``Authorization`` header into an :class:`Identity`.
"""

from electa.auth.identity import Authenticator, Credential, Identity
from electa.auth.keys import KeyRecord, parse_duration
from electa.auth.ratelimit import RateLimiter
from electa.auth.scopes import Scope
from electa.auth.tokens import VisitorClaims, sign_visitor_token, verify_visitor_token

__all__ = [
    "Authenticator",
    "Credential",
    "Identity",
    "KeyRecord",
    "RateLimiter",
    "Scope",
    "VisitorClaims",
    "parse_duration",
    "sign_visitor_token",
    "verify_visitor_token",
]
