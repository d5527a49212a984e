# nginx for the web hosts, from the pillar key `nginx`.
#
# Requisites used here:
#   require    a file waits for its directory
#   onchanges  the config test runs only when a config file changed
#   watch      the service stand-in reacts when its config changed
{% from 'map.jinja' import root, lookup with context %}
{% set nginx = pillar['nginx'] %}
{% set conf_dir = root ~ lookup.nginx.conf_dir %}

nginx_dirs:
  file.directory:
    - names:
      - {{ conf_dir }}/sites-available
      - {{ conf_dir }}/sites-enabled
      - {{ root }}/var/log/nginx
    - makedirs: True

nginx_conf:
  file.managed:
    - name: {{ conf_dir }}/nginx.conf
    - source: salt://nginx/files/nginx.conf.jinja
    - template: jinja
    # extra variables for the template, beside grains and pillar
    - context:
        user: {{ lookup.nginx.user }}
        conf_dir: {{ conf_dir }}
        log_dir: {{ root }}/var/log/nginx
    - require:
      - file: nginx_dirs

{% for site, cfg in nginx['sites'] | dictsort %}
nginx_site_{{ site }}:
  file.managed:
    - name: {{ conf_dir }}/sites-available/{{ site }}.conf
    - source: salt://nginx/files/site.conf.jinja
    - template: jinja
    - context:
        site: {{ site }}
        docroot: {{ root }}{{ cfg['root'] }}
    - require:
      - file: nginx_dirs

# Debian-style: a site is enabled by a symlink to its file
nginx_site_{{ site }}_enabled:
  file.symlink:
    - name: {{ conf_dir }}/sites-enabled/{{ site }}.conf
    - target: {{ conf_dir }}/sites-available/{{ site }}.conf
    - require:
      - file: nginx_site_{{ site }}

nginx_docroot_{{ site }}:
  file.managed:
    - name: {{ root }}{{ cfg['root'] }}/index.html
    - makedirs: True
    - contents: <h1>{{ cfg['server_name'] }}</h1>
{% endfor %}

# Stands in for `nginx -t`: checks the rendered config, and only when one of
# the config files changed in this run.
nginx_config_test:
  cmd.run:
    - name: grep -q "worker_processes {{ nginx['worker_processes'] }};" "{{ conf_dir }}/nginx.conf"
    - onchanges:
      - file: nginx_conf
{%- for site in nginx['sites'] | sort %}
      - file: nginx_site_{{ site }}
{%- endfor %}

# Stands in for `service.running: nginx` (see extras/packages.sls): a watch
# requisite makes it fire (a reload, for a real service) when its config
# changed.
nginx_service:
  test.succeed_without_changes:
    - name: nginx
    - watch:
      - file: nginx_conf
      - cmd: nginx_config_test
