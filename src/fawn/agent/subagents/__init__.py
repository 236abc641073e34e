"""Sub-agents: the ``task`` tool hands a bounded piece of work to an agent of its own.

A sub-agent is a separate LangChain agent (its own graph, no checkpointer) that shares the
thread's sandbox and files but never its conversation; its final answer comes back as the
``task`` tool's result. Types, the result contract, the runner and the tool live in the
modules of this package; the per-run limits are the ``subagent_limit`` middleware.
"""
