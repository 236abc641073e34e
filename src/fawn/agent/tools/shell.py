"""``bash``: run a command in the thread's sandbox."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool

from fawn.agent.tools.access import RunToolRuntime, thread_sandbox
from fawn.agent.tools.names import BASH
from fawn.sandbox import CommandResult, SandboxProvider


def format_result(result: CommandResult) -> str:
    """The text the model reads: the output, then ``[exit code N]`` when it failed.

    A command killed at its deadline already ends with the sandbox's timeout line.
    """
    output = result.output
    if result.timed_out:
        return output
    if result.exit_code != 0:
        return f"{output.rstrip(chr(10))}\n[exit code {result.exit_code}]".lstrip("\n")
    return output if output else "(no output)"


def bash_tool(provider: SandboxProvider) -> BaseTool:
    @tool(BASH, parse_docstring=True)
    async def bash(description: str, command: str, runtime: RunToolRuntime) -> str:
        """Execute a bash command in the thread's isolated Linux sandbox.

        - The working directory is /mnt/user-data/workspace. Only /mnt/user-data/workspace, /mnt/user-data/uploads and /mnt/user-data/outputs are writable; /mnt/skills is read-only.
        - There is no network access, and a command that runs too long is killed.
        - Memory, processes, CPU time, file sizes, /tmp and the thread's disk space are limited; a command stopped at a limit ends with a line saying which.
        - Use `python` to run Python code. Put files meant for the user in /mnt/user-data/outputs.
        - Output is capped: redirect long output to a file and read it in parts.

        Args:
            description: Explain why you are running this command, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            command: The bash command to execute. Always use absolute paths for files and directories.
        """
        sandbox = await thread_sandbox(provider, runtime)
        result = await sandbox.execute(command)
        return sandbox.policy.mask(format_result(result))

    return bash
