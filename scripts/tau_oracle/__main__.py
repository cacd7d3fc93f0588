import sys

from scripts.tau_oracle.run import main

sys.exit(main())
