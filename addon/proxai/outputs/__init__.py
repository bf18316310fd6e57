"""What ProxAI shows and exports about flows: the view's text, the verdict, the report, the run
report (HTML, CSV, JSON), run comparison, cost and telemetry spans (docs/design/visibility.md)."""
