first_value: 42
