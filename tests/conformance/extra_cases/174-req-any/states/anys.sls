ok_nochange:
  test.succeed_without_changes: []
ok_change:
  test.succeed_with_changes: []
bad_one:
  test.fail_without_changes: []
bad_two:
  test.fail_without_changes: []

req_any_mixed:
  test.succeed_without_changes:
    - require_any:
      - test: bad_one
      - test: ok_nochange

req_any_all_bad:
  test.succeed_without_changes:
    - require_any:
      - test: bad_one
      - test: bad_two

onch_any_hit:
  test.succeed_with_changes:
    - onchanges_any:
      - test: ok_nochange
      - test: ok_change

onch_any_miss:
  test.succeed_with_changes:
    - onchanges_any:
      - test: ok_nochange
      - test: bad_one

watch_any_hit:
  test.succeed_without_changes:
    - watch_any:
      - test: ok_change
      - test: bad_two
