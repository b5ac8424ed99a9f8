import sys

from objrel.cli.main import main

sys.exit(main())
