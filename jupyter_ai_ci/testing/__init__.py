"""Test helpers that ship with the package, so users can test their own notebooks
against a scripted model: a real HTTP server speaking the OpenAI protocol."""

from .openai_server import Reply, ScriptedOpenAIServer

__all__ = ["Reply", "ScriptedOpenAIServer"]
