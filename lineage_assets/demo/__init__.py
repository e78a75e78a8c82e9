"""The project's own demo stream (the repo does not depend on files outside itself)."""
