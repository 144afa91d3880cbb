from recompile_cli.cli.app import main

main()
