# nothing here
{# nor here #}
