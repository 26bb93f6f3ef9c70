"""Where documents come from: URLs, local paths, git repositories (all handled as hostile)."""
