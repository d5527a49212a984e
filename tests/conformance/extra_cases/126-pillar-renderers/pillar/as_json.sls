#!json
{"json_only": {"list": [1, 2, 3], "flag": true, "nothing": null}}
