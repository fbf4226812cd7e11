import sys

from toolbound.cli import main

sys.exit(main())
