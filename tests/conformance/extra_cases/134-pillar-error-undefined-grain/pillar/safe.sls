safe_get: {{ grains.get('no_such_grain', 'fallback') }}
safe_default: {{ undefined_thing | default('dflt') }}
safe_defined: {{ 'yes' if undefined_thing is defined else 'no' }}
