import sys

from scripts.chaos.suite import main

sys.exit(main())
