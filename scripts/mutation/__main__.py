import sys

from scripts.mutation.run import main

sys.exit(main())
