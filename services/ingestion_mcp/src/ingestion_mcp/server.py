"""Build the MCP server for the configured tool profiles."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import Any

from ingestion_contracts.common import DOC_ID_PATTERN, NAME_PATTERN
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from .access.client_roots import RootsMiddleware
from .errors import ToolFailure, failure_from
from .handshake import identity
from .profiles import NAMES
from .profiles.record import Profile, load
from .state import AppState
from .toolkit.lean_schema import inline_single_use, lean, shown_once, without_required, without_unreached_limits
from .toolkit.strict_schema import strict

# Rules the instructions state once (collection names; a doc_id is one search or list_documents gave), not
# listed in every tool's schema; each tool's model still enforces them and its error names the rule.
SAID_ONCE = (NAME_PATTERN, DOC_ID_PATTERN)

# The value MCP gives a hint that is left out (ToolAnnotations: readOnlyHint false, destructiveHint true, ...).
HINT_DEFAULTS = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}


def lean_annotations(hints: ToolAnnotations, *, omit_defaults: bool = False) -> ToolAnnotations:
    """The hints without those the spec says mean nothing for a read-only tool (destructiveHint, idempotentHint),
    and with omit_defaults without those that say what the spec assumes when a hint is absent."""
    drop = {"destructive_hint", "idempotent_hint"} if hints.read_only_hint else set()
    if omit_defaults:
        drop |= {name for name, default in HINT_DEFAULTS.items() if getattr(hints, name) == default}
    return hints.model_copy(update=dict.fromkeys(drop)) if drop else hints


# A line break inside a paragraph (the source's wrapping), not a blank line between paragraphs.
UNWRAP = re.compile(r"(?<=\S)\n(?=\S)")


class ProfileClash(ValueError):
    pass


class ProfileServer(MCPServer):
    """An MCPServer whose argument-validation errors come back in the error shape of the tool's profile.

    The SDK validates arguments against the input schema before the tool runs and answers a failure with
    plain text; agents written against a contract expect its error shape for those too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_profiles: dict[str, Profile] = {}

    def tool(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        """Tools are described by their docstring without the source's indentation and line wrapping (every
        space is a token); paragraphs stay apart."""
        register = super().tool(*args, **kwargs)

        def decorate(fn: Any) -> Any:
            if fn.__doc__:
                fn.__doc__ = UNWRAP.sub(" ", inspect.cleandoc(fn.__doc__))
            return register(fn)

        return decorate

    async def list_tools(self) -> list[MCPTool]:
        """Each schema without pydantic's titles and other redundant keys (the tools/list is in every conversation),
        in the subset every client accepts (toolkit/strict_schema.py); among our own tools' results, each shape
        shown once (a job, a search hit: toolkit/lean_schema.shown_once)."""
        tools = [self._lean(tool) for tool in await super().list_tools()]
        own = [i for i, tool in enumerate(tools) if self._own(tool.name) and tool.output_schema is not None]
        shared = shown_once([(tools[i].name, tools[i].output_schema) for i in own])
        for i, schema in zip(own, shared, strict=True):
            tools[i] = tools[i].model_copy(update={"output_schema": schema})
        return tools

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        """A prompt this server does not have is the caller's mistake (-32602, naming the prompts there are); the
        SDK raised a ValueError, answered as code 0 or -32603 with a traceback logged."""
        if self._prompt_manager.get_prompt(name) is None:
            there = ", ".join(prompt.name for prompt in self._prompt_manager.list_prompts()) or "none"
            raise MCPError(INVALID_PARAMS, f"Unknown prompt '{name}'; this server's prompts: {there}.")
        return await super().get_prompt(name, arguments, context)

    def _own(self, name: str) -> bool:
        profile = self.tool_profiles.get(name)
        return profile is not None and profile.own_contract

    def _lean(self, tool: MCPTool) -> MCPTool:
        profile = self.tool_profiles.get(tool.name)
        own = profile is not None and profile.own_contract
        output = inline_single_use(lean(tool.output_schema, output=True, absent_is_null=own))
        output = without_required(output) if own else output
        arguments = lean(tool.input_schema, absent_is_null=own)
        arguments = without_unreached_limits(inline_single_use(arguments), SAID_ONCE) if own else arguments
        hints = tool.annotations and lean_annotations(tool.annotations, omit_defaults=own)
        update = {"input_schema": strict(arguments), "output_schema": strict(output), "annotations": hints}
        return tool.model_copy(update=update)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        profile = self.tool_profiles.get(name)
        if profile is not None and profile.own_contract and (refused := self._unknown_arguments(name, arguments)):
            return profile.argument_errors(refused)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__  # arguments the schema refused, as opposed to a failure inside the tool
            if not isinstance(cause, ValidationError) or isinstance(exc, UnexpectedToolError):
                raise
            if name not in self.tool_profiles:
                raise
            tool = self._tool_manager.get_tool(name)
            # A tool whose answers have a shape of their own says how its refused arguments are answered.
            own = getattr(tool.fn, "argument_errors", None) if tool is not None else None
            return (own or self.tool_profiles[name].argument_errors)(failure_from(cause))

    def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> ToolFailure | None:
        """Our own tools refuse an argument they do not take (the SDK drops it silently: `collections` for
        `collection` would search everything); other profiles answer as the systems they copy do."""
        tool = self._tool_manager.get_tool(name)
        if tool is None or not isinstance(arguments, dict):
            return None
        known = list(tool.parameters.get("properties", {}))
        unknown = [key for key in arguments if key not in known]
        if not unknown:
            return None
        hints = [f"'{k}' (did you mean '{close[0]}'?)" if (close := get_close_matches(k, known, n=1)) else f"'{k}'"
                 for k in unknown]  # fmt: skip
        return ToolFailure(
            f"{name} does not take the argument {', '.join(hints)}.",
            f"Call it with these arguments only: {', '.join(known)}.", code="INVALID_INPUT",
        )  # fmt: skip


def _tool_names(profile: Profile, state: AppState) -> set[str]:
    scratch = MCPServer(name="scratch")
    profile.register(scratch, state)
    return {tool.name for tool in scratch._tool_manager.list_tools()}


def build_server(state: AppState) -> MCPServer:
    # The backend is opened once by the caller and shared by every session: MCP's own lifespan
    # runs per session on streamable HTTP, and Milvus Lite allows one owner per data folder.
    profiles = state.settings.profiles
    server_name, version, instructions = identity(list(profiles))
    server = ProfileServer(name=server_name, version=version, instructions=instructions)
    if state.client_roots is not None and state.client_roots.enabled:
        server.middleware.append(RootsMiddleware(state.client_roots))
    owner: dict[str, str] = {}
    for chosen in profiles:
        if chosen not in NAMES:
            raise ProfileClash(f"Unknown tool profile {chosen!r}; available: {', '.join(NAMES)}.")
        profile = load(chosen)
        for name in _tool_names(profile, state):
            if name in owner:
                raise ProfileClash(
                    f"Tool profiles {owner[name]!r} and {chosen!r} both define the tool {name!r}; "
                    "choose one of them in INGESTION_MCP_PROFILES (they cannot be served together)."
                )
            owner[name] = chosen
            server.tool_profiles[name] = profile
        profile.register(server, state)
        if profile.jobs is not None:
            profile.jobs(state.kinds)
    return server
