"""`python -m kernel_skills`: the same CLI as the `kernels` command."""

from .cli import main

if __name__ == "__main__":
    main()
