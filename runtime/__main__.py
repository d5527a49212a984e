import sys

from runtime.cli.main import main

sys.exit(main())
