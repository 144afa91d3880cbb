from recompile_cli.cli import main

main()
