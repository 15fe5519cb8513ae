from recourse.cli import main

raise SystemExit(main())
