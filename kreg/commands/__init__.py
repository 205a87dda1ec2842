"""The `kreg` subcommands that sit on top of every layer (verify, submit, profile), and the exit codes
they all use."""

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_ENV = 3
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141
EXIT_CODES = {EXIT_OK: "all good", EXIT_REJECTED: "some variant rejected",
              EXIT_USAGE: "usage error (bad argument, unknown op or variant)",
              EXIT_ENV: "environment error (no GPU or CuPy for --device gpu, KREG_HOME or store not usable)",
              EXIT_INTERRUPTED: "interrupted", EXIT_PIPE: "the reader closed the pipe"}
