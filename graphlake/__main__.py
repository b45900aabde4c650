"""`python -m graphlake ...` runs the same CLI as the `graphlake` command."""

from graphlake.cli_quick import main

if __name__ == "__main__":
    main()
