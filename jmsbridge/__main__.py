from jmsbridge.cli import main

raise SystemExit(main())
