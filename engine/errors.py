"""EngineError: a problem with the model, the request or the kernels available, said in one sentence
(the CLI prints it without a traceback)."""


class EngineError(RuntimeError):
    """`exit_code` is the CLI's: 2 for a bad model or request, 1 for a profile that cannot run, 3 for the
    environment (no GPU, no results store)."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
