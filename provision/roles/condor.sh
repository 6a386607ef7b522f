# Every HTCondor host: pool key before first start, rendered config, daemons.
. provision/lib.sh
install -d -m 0700 /etc/condor/passwords.d /etc/condor/tokens.d
key=/etc/condor/passwords.d/POOL
# the password is read from the bundle's 0600 file (-i), never put on a command line
# (condor_store_cred 23.x: -i FILE reads the credential, -f FILE writes the scrambled pool key)
condor_store_cred add -c -i secrets/pool-password -f "$key.new" >/dev/null
if cmp -s "$key.new" "$key"; then rm -f "$key.new"; else mv "$key.new" "$key"; echo "$key" >> "$changed_file"; fi
chmod 0600 "$key"
put etc/condor/config.d/50-testbed.conf
put etc/condor/config.d/60-testbed-profile.conf
# local-name startds each need their own execute directory
# (condor only makes EXECUTE itself at first start, so make both here)
execute=$(condor_config_val EXECUTE)
for dir in "" ${TB_STARTD_EXECUTE_DIRS:-}; do
  install -d -m 0755 -o condor -g condor "$execute/$dir"
done
# users who submit get an IDTOKEN (HTCondor-C authenticates as the user)
if [[ " $TB_ROLES " == *" submit "* ]]; then
  for user in $TB_CONDOR_USERS; do
    tok=/home/$user/.condor/tokens.d/testbed
    if [ ! -s "$tok" ] || changed POOL; then
      install -d -m 0700 -o "$user" -g "$user" "/home/$user/.condor" "/home/$user/.condor/tokens.d"
      condor_token_create -identity "$user@$(condor_config_val UID_DOMAIN)" > "$tok.new"
      install -m 0600 -o "$user" -g "$user" "$tok.new" "$tok" && rm -f "$tok.new"
    fi
  done
fi
# Startds register with every CCB when they start; a CCB that is not up yet is only
# picked up when shared_port republishes (300 s). So wait (bounded) for the CCBs.
if [[ " $TB_ROLES " == *" worker "* || " $TB_ROLES " == *" dtn "* ]]; then
  for ccb in $TB_CCB_ADDRESSES; do
    for _ in $(seq 100); do
      condor_status -pool "$ccb" -collector -af Name >/dev/null 2>&1 && break
      sleep 3
    done
  done
fi
restart=0; if [ -s "$changed_file" ] && grep -q -e /etc/condor "$changed_file"; then restart=1; fi
start_or_restart condor.service "$restart"
