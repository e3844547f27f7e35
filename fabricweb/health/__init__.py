"""Link health: operator link policies and the events that health rules open and resolve."""
