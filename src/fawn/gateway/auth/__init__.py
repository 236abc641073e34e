"""Identity at the edge: who is calling (resolved once per request, as a value), and what
they may reach. See the README's "Users and authentication".

``mode: none`` (one user, loopback only), ``local`` (accounts, sessions, API keys), ``oidc``
(the same, signed in through OpenID Connect providers) or ``custom`` (a LangGraph
``langgraph_sdk.Auth`` object).
"""
